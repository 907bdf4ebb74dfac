package stream

import (
	"testing"

	"github.com/ccbridge/ccbridge/internal/adaptertest"
)

func TestMain(m *testing.M) { adaptertest.Main(m) }
