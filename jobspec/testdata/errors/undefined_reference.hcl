job "web" {
  group "g" {
    count = var.replicas
    task "t" {
      driver = "raw_exec"
      config {
        command = "${local.cmd}"
        args    = [nosuchfunc("x")]
      }
    }
  }
}
