// Package servertest tests package durable against a real Temporal server
// in the test process (temporaltest). It is a module of its own, so that the
// durable module does not require the Temporal server: its tests are
// package durable's, written from outside it, hence the dot import.
package servertest
