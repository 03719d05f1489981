// Command buildk8s builds (or finds cached) etcd, kube-apiserver, kubelet
// and kube-scheduler for the local backend and prints the bin directory.
//
//	go run ./hack/buildk8s [-version v1.37.2] [-cache DIR]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/sidebench/sidebench/harness/localcluster"
)

func main() {
	version := flag.String("version", localcluster.DefaultVersion, "Kubernetes version")
	cache := flag.String("cache", "", "cache dir (default ~/.cache/sidebench/k8s/VERSION)")
	flag.Parse()
	dir := *cache
	if dir == "" {
		dir = localcluster.DefaultCacheDir(*version)
	}
	bins, err := localcluster.Build(context.Background(), *version, dir, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(bins.Dir)
}
