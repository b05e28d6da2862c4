job "web" {
  priority    = "high"
  datacenters = "dc1"
  group "g" {
    count = 1.5
    restart {
      delay = "15 seconds"
      interval = 30
    }
    task "t" {
      driver       = "raw_exec"
      kill_timeout = "10s"
      leader       = "yes"
      env {
        LIST = ["a"]
      }
    }
  }
}
