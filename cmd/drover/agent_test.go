package main

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
)

func TestAwaitShutdown(t *testing.T) {
	t.Run("clean", func(t *testing.T) {
		e, out, _ := testEnv(nil)
		sig := make(chan os.Signal, 2)
		sig <- syscall.SIGTERM
		called := false
		if code := awaitShutdown(e, sig, func() error { called = true; return nil }); code != 0 || !called {
			t.Fatalf("exit %d, shutdown called %v", code, called)
		}
		if !strings.Contains(out.String(), "Caught signal: terminated") || !strings.Contains(out.String(), "Shutdown complete") {
			t.Fatalf("stdout = %q", out)
		}
	})
	t.Run("shutdown error", func(t *testing.T) {
		e, _, errOut := testEnv(nil)
		sig := make(chan os.Signal, 1)
		sig <- os.Interrupt
		if code := awaitShutdown(e, sig, func() error { return errors.New("stuck") }); code != 1 {
			t.Fatalf("exit %d", code)
		}
		if !strings.Contains(errOut.String(), "stuck") {
			t.Fatalf("stderr = %q", errOut)
		}
	})
	t.Run("second signal forces exit", func(t *testing.T) {
		e, _, errOut := testEnv(nil)
		sig := make(chan os.Signal, 2)
		sig <- os.Interrupt
		release := make(chan struct{})
		defer close(release)
		started := make(chan struct{})
		shutdown := func() error {
			close(started)
			<-release // a shutdown that hangs
			return nil
		}
		go func() { <-started; sig <- os.Interrupt }()
		if code := awaitShutdown(e, sig, shutdown); code != 1 {
			t.Fatalf("exit %d", code)
		}
		if !strings.Contains(errOut.String(), "second signal") {
			t.Fatalf("stderr = %q", errOut)
		}
	})
}
