job "web" {
  group = "g"
  constraint = {}
  group "g" {
    task "t" {
      driver = "raw_exec"
      resources = { cpu = 1 }
      meta = { a = "b" }
      meta {
        c = "d"
      }
    }
  }
}
