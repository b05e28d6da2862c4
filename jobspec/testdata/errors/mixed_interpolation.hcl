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
      }
      meta = "not a map"
      config = ["a"]
    }
  }
}
