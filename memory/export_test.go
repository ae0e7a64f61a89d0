package memory

// Validate reports h's violations of the API's rules, for the external tests.
func Validate(h *History) error { return h.validate() }
