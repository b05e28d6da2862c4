job "web" {
  group "g" {
    count = var.replicas
    task "t" {
      driver = "raw_exec"
      config {
        command = "${local.cmd}"
        args    = [nosuchfunc("x"), "${NOMAD_META_owner}"]
      }
      env {
        OWNER = "${NOMAD_META_owner}-${NOMAD_PORT_http}"
        NOPE  = "${NOMAD_META_owner}-${var.nope}"
      }
    }
  }
}
