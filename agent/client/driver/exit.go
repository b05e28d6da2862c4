package driver

import "context"

// Exit is a task's exit as a handle records it: set once by the handle,
// awaited by any number of callers. The zero value is not usable; use
// NewExit.
type Exit struct {
	done   chan struct{}
	result *ExitResult // written once, before done closes
}

// NewExit returns an Exit that has not happened yet.
func NewExit() *Exit { return &Exit{done: make(chan struct{})} }

// Set records the result and wakes every waiter. It must be called once.
func (e *Exit) Set(res *ExitResult) {
	e.result = res
	close(e.done)
}

// Done is closed once the result is set.
func (e *Exit) Done() <-chan struct{} { return e.done }

// Wait returns the result once it is set, or ctx's error first; it is
// the body of Handle.Wait.
func (e *Exit) Wait(ctx context.Context) (*ExitResult, error) {
	select {
	case <-e.done:
		return e.result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
