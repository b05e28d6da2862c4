// Package e2e holds end-to-end tests that build bin/drover and drive it as
// real OS processes over real TCP on 127.0.0.1. Nothing imports it.
package e2e
