package skills_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentloop/agentloop/tools/skills"
)

// Find reads each skill's name and description; the skill tool offers
// them to the model, which loads a skill's instructions when it needs
// them.
func Example() {
	dir, _ := os.MkdirTemp("", "skills")
	defer os.RemoveAll(dir)
	os.MkdirAll(filepath.Join(dir, "changelog"), 0o755)
	os.WriteFile(filepath.Join(dir, "changelog", "SKILL.md"),
		[]byte("---\nname: changelog\ndescription: Write a changelog entry for a change.\n---\nOne line per change, newest first.\n"), 0o644)

	found, err := skills.Find(dir)
	if err != nil {
		fmt.Println(err)
	}
	for _, s := range found {
		fmt.Printf("%s: %s\n", s.Name, s.Description)
	}
	fmt.Println(skills.Tool(found).Spec().Name)
	// Output:
	// changelog: Write a changelog entry for a change.
	// skill
}
