// Package llm streams one model turn from the Anthropic Messages API as a
// sequence of small, typed events.
//
// It is the reasoning engine of the agent loop: the seed's llm.py. The
// official SDK builds the request, authenticates and names the API version;
// this package reads the server-sent events itself, turns them into [Event]
// values, and retries transient failures with one policy.
//
// The conversation types ([Message] and its [Block]s) live here too, because
// this is the layer that speaks the wire format; every other layer uses them.
package llm
