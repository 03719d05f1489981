// Package cli holds sidebench's cobra commands.
package cli

import (
	"fmt"
	"os"
)

// Main runs the CLI with the process's arguments and streams and returns
// the exit code.
func Main() int {
	fmt.Fprintln(os.Stderr, "sidebench: CLI not wired yet")
	return 3
}
