// Command sidebench measures sidecar ordering guarantees under faults.
package main

import (
	"os"

	"github.com/sidebench/sidebench/harness/cli"
)

func main() { os.Exit(cli.Main()) }
