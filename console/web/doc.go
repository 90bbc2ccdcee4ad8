// Package web is the console: the pages a person reads in a browser to see
// the log, its consumers and the bridges (docs/console.md). It serves an
// HTML shell for every page, one hand-written JavaScript file and one style
// sheet, all embedded in the binary: nothing is built, nothing is fetched
// from elsewhere, at build time or at run time.
//
// The pages hold no data. The script in the browser reads the JSON routes
// the bridge serves anyway (the overview, queue resources and consumers,
// messages, dead letters, maintenance), with the bearer token the person
// typed in, kept in the tab's sessionStorage; so a page sees exactly what
// that token may see, and an admin-only control (the maintenance switch,
// sending dead letters back) is shown only when the admin route answers.
//
// Who gets the pages: with tokens configured, anyone (the data needs a
// token); without tokens, where every data route acts for the default tenant
// with every right, only a peer on the loopback interface, so that an
// unauthenticated bridge does not hand a console to its network.
//
// It holds no goroutine and no state after construction; a Handler is safe
// for concurrent use. It imports nothing of the project: the front door
// (bridge) mounts it.
package web
