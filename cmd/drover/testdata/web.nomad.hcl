variable "count" {
  default = 3
}

job "web" {
  datacenters = ["dc1"]

  group "web" {
    count = var.count

    task "server" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "sleep 600"]
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
