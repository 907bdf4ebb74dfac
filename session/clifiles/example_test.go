package clifiles_test

import (
	"fmt"

	"github.com/ccbridge/ccbridge/session/clifiles"
)

func ExampleProjectDirName() {
	// The child's own entries win over ccbridge's environment.
	env := []string{"HOME=/home/user"}
	getenv := func(key string) string { return clifiles.Getenv(env, func(string) string { return "" }, key) }
	fmt.Println(clifiles.ProjectDir(clifiles.ConfigDir(getenv), "/home/user/my project"))
	fmt.Println(clifiles.ProjectDirName("/x/😀"))
	// Output:
	// /home/user/.claude/projects/-home-user-my-project
	// -x---
}
