// Package tool is the action system of the agent loop: the seed's tools.py.
// It turns typed Go functions into tools with generated JSON schemas
// ([New]), checks the model's input against them, and runs calls
// concurrently ([Registry.Run]). No tool failure can crash the loop: each
// becomes an is_error [llm.ToolResult] saying what went wrong, for the model
// to correct, never a Go error.
//
// Schemas are generated, and inputs validated against the very schema sent
// to the model, by github.com/google/jsonschema-go, as the MCP Go SDK does,
// so that a tool's schema means the same here and over MCP. It reads drafts
// 2020-12 (when "$schema" is absent, as MCP says) and 7, and fetches
// nothing. It stops at an input's first problem, so an input that fails is
// checked again member by member, and the model is told every problem at
// once, each naming its field, to fix a call in one turn.
package tool
