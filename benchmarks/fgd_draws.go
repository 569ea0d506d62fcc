// Command fgd_draws writes the raw values of Go's math/rand generator that the FGD paper's
// simulator draws from (Weng et al., ATC'23: hkust-adsl/kubernetes-scheduler-simulator seeds
// math/rand with the experiment's seed). It made hdrm/data/fgd_paper_draws.npz (Go 1.19):
//
//	go run benchmarks/fgd_draws.go 20000 /tmp/draws 42 43 44 45 46 47 48 49 50 51
//	python -c "import numpy as np; np.savez('hdrm/data/fgd_paper_draws.npz', **{str(s):
//	    np.fromfile(f'/tmp/draws/seed_{s}.bin', dtype='<u4') for s in range(42, 52)})"
//
// For each seed, the first N values as Int63() >> 31 (the 32 bits that hdrm's replay of the
// simulator's draws reads: hdrm/fragmentation/paper_draws.py), little-endian uint32, in
// DIR/seed_S.bin. Usage: fgd_draws N DIR SEED...
package main

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
)

func main() {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: fgd_draws N DIR SEED...")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[1])
	if err != nil || n <= 0 {
		fmt.Fprintf(os.Stderr, "fgd_draws: N must be a positive integer, got %q\n", os.Args[1])
		os.Exit(2)
	}
	for _, arg := range os.Args[3:] {
		seed, err := strconv.ParseInt(arg, 10, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "fgd_draws: seed must be an integer, got %q\n", arg)
			os.Exit(2)
		}
		source := rand.New(rand.NewSource(seed))
		buf := make([]byte, 4*n)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(buf[4*i:], uint32(source.Int63()>>31))
		}
		if err := os.WriteFile(filepath.Join(os.Args[2], "seed_"+arg+".bin"), buf, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "fgd_draws:", err)
			os.Exit(1)
		}
	}
}
