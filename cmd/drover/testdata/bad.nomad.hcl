job "web" {
  group "web" {
    count = "three"
    task "server" {
      driver = "raw_exec"
      service {
        name = "web"
      }
    }
  }
}
