// Package mcptool registers the tools of an MCP server in a tool.Registry.
package mcptool
