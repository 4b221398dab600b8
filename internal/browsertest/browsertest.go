// Package browsertest drives headless Chromium (Debian's /usr/bin/chromium)
// from tests through chromedp, and records every request the pages make,
// so a test can check that a page reaches nothing beyond its own site.
package browsertest

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Path is where the tests find Chromium (.ci/run installs Debian's).
const Path = "/usr/bin/chromium"

// Browser is one headless Chromium with a fresh profile; each Tab is a
// page of it.
type Browser struct {
	ctx context.Context
	t   testing.TB
}

// New starts Chromium for the test: headless, without the sandbox, GPU,
// background networking, component updates, sync or first-run pages, on
// an empty profile, 1,400 × 900. It stops when the test ends.
func New(t testing.TB) *Browser {
	t.Helper()
	if _, err := os.Stat(Path); err != nil {
		t.Fatalf("chromium: %v (.ci/run installs Debian's chromium)", err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(Path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		cancelAlloc()
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() { cancel(); cancelAlloc() })
	return &Browser{ctx: ctx, t: t}
}

// Tab is one page of the browser, with the requests it made.
type Tab struct {
	Ctx context.Context
	t   testing.TB

	mu   sync.Mutex
	urls []string
	// errs are the page's uncaught exceptions, for failure messages.
	errs []string
}

// Tab opens a new page for test t (it closes when t ends); its requests
// are recorded from the start.
func (b *Browser) Tab(t testing.TB) *Tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	tab := &Tab{Ctx: ctx, t: t}
	events := chromedp.Events(ctx, network.RequestWillBeSent)
	go func() {
		for ev, err := range events {
			if err != nil {
				return
			}
			tab.mu.Lock()
			tab.urls = append(tab.urls, ev.Request.URL)
			tab.mu.Unlock()
		}
	}()
	exceptions := chromedp.Events(ctx, runtime.ExceptionThrown)
	go func() {
		for ev, err := range exceptions {
			if err != nil {
				return
			}
			msg := ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil {
				msg += " " + ev.ExceptionDetails.Exception.Description
			}
			tab.mu.Lock()
			tab.errs = append(tab.errs, msg)
			tab.mu.Unlock()
		}
	}()
	return tab
}

// Requests returns the URLs the page has requested so far.
func (tab *Tab) Requests() []string {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	return append([]string(nil), tab.urls...)
}

// Do runs actions on the page, failing the test on an error, each run
// bounded by a minute.
func (tab *Tab) Do(steps ...chromedp.Action[chromedp.Void]) {
	tab.t.Helper()
	ctx, cancel := context.WithTimeout(tab.Ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		tab.t.Fatalf("chromium: %v", err)
	}
}

// Eval evaluates a JavaScript expression (awaiting a promise) and decodes
// its value into T.
func Eval[T any](tab *Tab, expr string) T {
	tab.t.Helper()
	ctx, cancel := context.WithTimeout(tab.Ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		tab.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// WaitFor waits until a JavaScript expression is truthy, at most limit.
func (tab *Tab) WaitFor(expr string, limit time.Duration) {
	tab.t.Helper()
	ctx, cancel := context.WithTimeout(tab.Ctx, limit+5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(limit), chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		tab.mu.Lock()
		errs := strings.Join(tab.errs, "\n")
		tab.mu.Unlock()
		state, _ := chromedp.Run(tab.Ctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText.slice(0, 2000)`))
		tab.t.Fatalf("waiting for %s: %v\npage: %s\nexceptions:\n%s", expr, err, state, errs)
	}
}

// Screenshot writes a PNG of the whole page to path.
func (tab *Tab) Screenshot(path string) {
	tab.t.Helper()
	ctx, cancel := context.WithTimeout(tab.Ctx, time.Minute)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tab.t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tab.t.Fatal(err)
	}
}

// AllowDownloads saves the pages' downloads into dir under the names the
// pages give them.
func (tab *Tab) AllowDownloads(dir string) {
	tab.t.Helper()
	_, err := chromedp.CallBrowser(tab.Ctx, browser.SetDownloadBehavior,
		browser.SetDownloadBehaviorParams{Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir})
	if err != nil {
		tab.t.Fatalf("allow downloads: %v", err)
	}
}
