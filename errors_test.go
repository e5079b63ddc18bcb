package chargenet_test

import (
	"context"
	"errors"
	"testing"

	"github.com/chargenet/chargenet"
	"github.com/stretchr/testify/assert"
)

func TestWrapStoreError(t *testing.T) {
	down := errors.New("connection refused")
	notFound := chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "uid", "EVSE with uid 7 not found")
	isDown := func(err error) bool { return errors.Is(err, down) }
	tests := []struct {
		name        string
		err         error
		wantNil     bool
		wantMsg     string
		unavailable bool
	}{
		{name: "nil", err: nil, wantNil: true},
		{name: "domain error as it is", err: notFound, wantMsg: "EVSE with uid 7 not found"},
		{name: "unavailable", err: down, wantMsg: "sqlite: read evse: database unavailable: connection refused", unavailable: true},
		{name: "other", err: context.Canceled, wantMsg: "sqlite: read evse: context canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := chargenet.WrapStoreError("sqlite", "read evse", tt.err, isDown)
			if tt.wantNil {
				assert.NoError(t, got)
				return
			}
			assert.EqualError(t, got, tt.wantMsg)
			assert.ErrorIs(t, got, tt.err, "the cause stays visible")
			assert.Equal(t, tt.unavailable, errors.Is(got, chargenet.ErrUnavailable))
			var de *chargenet.Error
			if tt.unavailable && assert.ErrorAs(t, got, &de) {
				assert.Equal(t, chargenet.CodeUnavailable, de.Code)
				assert.Equal(t, "database unavailable", de.Message, "all a client sees")
			}
		})
	}
}
