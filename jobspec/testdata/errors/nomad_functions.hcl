variable "conf" {
  default = try(file("app.conf"), "")
}

locals {
  net  = cidrsubnet("10.0.0.0/8", 8, 2)
  conf = yamldecode(var.conf)
}

job "web" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      meta {
        id     = uuidv4()
        digest = sha256("ok")
      }
    }
  }
}
