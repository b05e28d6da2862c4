job "web" {
  multiregion {
    strategy { max_parallel = 1 }
  }
  group "g" {
    task "t" {
      driver = "raw_exec"
      service {
        name = "web"
        connect {}
      }
      resources {
        numa {
          affinity = "require"
        }
      }
    }
  }
}
