variable "dir" {
  default = "/tmp"
}

job "web" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      env {
        GOOD = "${var.dir}/${NOMAD_TASK_DIR}"
        BAD  = "${attr.kernel.name == var.dir}"
        ALSO = "${var.dir == NOMAD_META_owner}"
        KEPT = "${NOMAD_META_owner}-${NOMAD_PORT_http}"
      }
      meta = "not a map"
      config = ["a"]
    }
  }
}
