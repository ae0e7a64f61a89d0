package memory

// Validate checks the request h would make against the fake API's rules,
// for the external tests.
func Validate(h *History) error { return h.validate() }
