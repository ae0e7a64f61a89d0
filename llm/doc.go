// Package llm streams one model turn from the Anthropic Messages API as a
// sequence of small, typed events: the seed's llm.py.
//
// The official SDK sends the request, authenticates and names the API
// version; this package writes the request's JSON and reads the server-sent
// events itself (with bufio and github.com/go-json-experiment/json), turns
// them into [Event] values, and retries transient failures by one policy.
// An [Assembler] turns the events back into the assistant [Message], handing
// out each block, such as a tool call, the moment it is complete. The
// conversation types ([Message] and its [Block]s) live here too, because
// this layer speaks the wire format that every other layer uses.
package llm
