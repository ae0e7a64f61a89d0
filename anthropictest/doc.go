// Package anthropictest provides a fake Anthropic Messages API on loopback,
// speaking the real server-sent-events wire format, for offline tests.
package anthropictest
