package adapter

import (
	"testing"

	"github.com/ccbridge/ccbridge/adapter/internal/adaptertest"
)

func TestMain(m *testing.M) { adaptertest.Main(m) }
