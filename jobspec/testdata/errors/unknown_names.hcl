job "web" {
  group "g" {
    cout = 3
    task "t" {
      drivr  = "raw_exec"
      driver = "raw_exec"
      resourcs {
        cpu = 100
      }
    }
  }
  frobnicate = true
}
