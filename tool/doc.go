// Package tool is the action system of the agent loop: the seed's tools.py.
// It registers typed Go functions as tools, generates their JSON schemas, and
// runs calls concurrently so that no tool failure can crash the loop.
package tool
