// Package mock is the mock task driver ("mock_driver", also "mock"): a task
// that runs no process, only a timer. Its config says how long it runs
// (run_for), how it ends (exit_code, exit_signal, exit_err_msg), whether
// Start fails (start_error, start_error_recoverable) or is slow
// (start_block_for), how long it takes to stop (kill_after), and a line it
// writes to stdout (stdout_string). It is cheap enough for simulations with
// thousands of tasks and is what client tests use when they do not need
// real processes.
//
// It must never start a process or touch anything outside the task's
// stdout FIFO.
package mock
