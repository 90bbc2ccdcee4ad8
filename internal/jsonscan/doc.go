// Package jsonscan is a zero-copy JSON scanner: it walks a document in
// place, validates it against the RFC 8259 grammar as it goes, and hands out
// byte ranges of the input (a payload as sent, a string's raw contents), so
// the push path neither copies nor re-encodes what it forwards.
//
// It knows nothing of push bodies or of the errors a request is answered
// with: jsonapi's decoders build on it. It imports nothing of the project.
// A Scanner belongs to the goroutine that scans with it.
package jsonscan
