# A file with only a variable.
variable "x" {
  default = 1
}
