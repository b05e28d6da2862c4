package bench

import (
	"testing"
	"time"
)

// TestCalibrate checks that the reference loop does its work in a
// plausible time.
func TestCalibrate(t *testing.T) {
	calibrationSink = 0
	d := calibrate()
	if d < time.Millisecond || d > 10*time.Second {
		t.Fatalf("reference loop took %v", d)
	}
	if calibrationSink == 0 {
		t.Fatal("the reference loop did no work")
	}
	t.Logf("reference loop: %v", d)
}
