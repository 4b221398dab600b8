package analysis

import (
	"runtime"
	"sync"
)

// runJobs runs every job on a fixed number of workers. Each job draws from
// its own random stream and writes only its own results, so the output is
// the same for any number of workers and any scheduling.
func runJobs(jobs []*bootJob, cfg bootConfig, workers int) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if workers > len(jobs) {
		workers = len(jobs)
	}
	next := make(chan *bootJob)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var s bootScratch
			for j := range next {
				j.run(cfg, &s)
			}
		}()
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
}
