# A service job: three copies of a long-running loop, kept running until
# the job is stopped.
#
#   drover job run examples/service.nomad.hcl
#   drover job run -var count=5 examples/service.nomad.hcl
variable "count" {
  type    = number
  default = 3
}

job "ticker" {
  type        = "service"
  datacenters = ["*"]

  group "ticker" {
    count = var.count

    restart {
      attempts = 2
      interval = "30m"
      delay    = "15s"
      mode     = "delay"
    }

    reschedule {
      delay          = "30s"
      delay_function = "exponential"
      max_delay      = "10m"
      unlimited      = true
    }

    task "ticker" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "while true; do date; sleep 5; done"]
      }

      resources {
        cpu    = 50
        memory = 32
      }

      kill_timeout = "5s"
    }
  }
}
