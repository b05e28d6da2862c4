variable "image" {
  type = string
}

variable "count" {
  type    = number
  default = "many"
}

variable "image" {
  default = "x"
}

job "web" {
  group "g" {
    count = var.count
    task "t" {
      driver = "raw_exec"
    }
  }
}
