// Command adversarial writes the adversarial corpus of issue 15 (scenarios
// and histories built to exhaust memory) into a directory, for measuring
// sidebench by hand:
//
//	go run ./hack/adversarial -o /tmp/adv
//	/usr/bin/time -v prlimit --as=$((8<<30)) ./bin/sidebench check /tmp/adv/cluster-faults.jsonl
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"

	"github.com/sidebench/sidebench/internal/adversarial"
)

func main() {
	out := flag.String("o", "", "output directory")
	scale := flag.Float64("scale", 1, "size factor (1: issue 15's sizes)")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "adversarial: -o DIR is required")
		os.Exit(2)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	paths, err := adversarial.WriteAll(*out, *scale)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	names := make([]string, 0, len(paths))
	for n := range paths {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Println(paths[n])
	}
}
