// pause: the pod sandbox's process (what registry.k8s.io/pause runs). It holds the pod's
// namespaces, reaps zombies as PID 1 would, and exits on SIGINT/SIGTERM. The test bed cannot pull
// images, so it builds this one (hack/cluster/images.sh) and imports it under the sandbox image
// name containerd is configured with.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var status syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
