package chargenet_test

import (
	"errors"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStatusFromOCPP(t *testing.T) {
	tests := map[string]chargenet.EvseStatus{
		"Available":     chargenet.StatusAvailable,
		"Reserved":      chargenet.StatusReserved,
		"Preparing":     chargenet.StatusCharging,
		"Charging":      chargenet.StatusCharging,
		"Finishing":     chargenet.StatusCharging,
		"SuspendedEV":   chargenet.StatusBlocked,
		"SuspendedEVSE": chargenet.StatusBlocked,
		"Faulted":       chargenet.StatusOutOfOrder,
		"Unavailable":   chargenet.StatusInoperative,
	}
	for in, want := range tests {
		got, err := chargenet.StatusFromOCPP(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "available", "Occupied", "PLANNED", "Unknown"} {
		_, err := chargenet.StatusFromOCPP(in)
		assert.ErrorIs(t, err, chargenet.ErrInvalid, in)
	}
}

func ptr[T any](v T) *T { return &v }

func dcEVSE() *chargenet.EVSE {
	deleted := time.Date(2026, 10, 1, 8, 0, 0, 0, time.UTC)
	return &chargenet.EVSE{
		UID: 7, EvseID: "DE*ABC*E7", ChargeboxID: 1, Status: chargenet.StatusAvailable, Version: 3,
		Connectors: []chargenet.Connector{
			{ID: 1, Standard: chargenet.StandardIEC62196T2Combo, Format: chargenet.FormatCable, PowerType: chargenet.PowerDC,
				MaxElectricPower: 150, MaxAmperage: 375, MaxVoltage: 920, TariffIDs: []string{}},
			{ID: 2, Standard: chargenet.StandardIEC62196T2, Format: chargenet.FormatSocket, PowerType: chargenet.PowerAC3Phase,
				MaxElectricPower: 22, MaxAmperage: 32, MaxVoltage: 400, TariffIDs: []string{}},
			{ID: 3, Standard: chargenet.StandardChademo, Format: chargenet.FormatCable, PowerType: chargenet.PowerDC,
				MaxElectricPower: 50, MaxAmperage: 125, MaxVoltage: 500, TariffIDs: []string{}, DeletedAt: &deleted},
		},
	}
}

func TestUpdateConnector(t *testing.T) {
	tests := []struct {
		name      string
		connector int64
		patch     chargenet.ConnectorPatch
		ifMatch   string
		kind      error
		code      string
		param     string
	}{
		{"power", 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(350.0)}, "", nil, "", ""},
		{"matching If-Match", 1, chargenet.ConnectorPatch{MaxVoltage: ptr(1000.0)}, `"3"`, nil, "", ""},
		{"If-Match list", 1, chargenet.ConnectorPatch{MaxVoltage: ptr(1000.0)}, `"1", "3"`, nil, "", ""},
		{"If-Match star", 1, chargenet.ConnectorPatch{MaxVoltage: ptr(1000.0)}, `*`, nil, "", ""},
		{"AC standard change on AC", 2, chargenet.ConnectorPatch{Standard: ptr(chargenet.StandardGBTAC)}, "", nil, "", ""},
		{"unknown connector", 9, chargenet.ConnectorPatch{MaxVoltage: ptr(1.0)}, "", chargenet.ErrNotFound, chargenet.CodeNotFound, "connectorId"},
		{"stale If-Match", 1, chargenet.ConnectorPatch{MaxVoltage: ptr(1.0)}, `"2"`, chargenet.ErrPreconditionFailed, chargenet.CodePreconditionFailed, "If-Match"},
		{"weak If-Match", 1, chargenet.ConnectorPatch{MaxVoltage: ptr(1.0)}, `W/"3"`, chargenet.ErrPreconditionFailed, chargenet.CodePreconditionFailed, "If-Match"},
		{"deleted", 3, chargenet.ConnectorPatch{MaxVoltage: ptr(1.0)}, "", chargenet.ErrConflict, chargenet.CodeConnectorDeleted, "connectorId"},
		{"empty", 1, chargenet.ConnectorPatch{}, "", chargenet.ErrInvalid, chargenet.CodeInvalidBody, ""},
		{"AC standard on DC", 1, chargenet.ConnectorPatch{Standard: ptr(chargenet.StandardIEC62196T2)}, "", chargenet.ErrInvalid, chargenet.CodeInvalidConnector, "standard"},
		{"DC standard on AC", 2, chargenet.ConnectorPatch{Standard: ptr(chargenet.StandardGBTDC)}, "", chargenet.ErrInvalid, chargenet.CodeInvalidConnector, "standard"},
		{"DC as socket", 1, chargenet.ConnectorPatch{Format: ptr(chargenet.FormatSocket)}, "", chargenet.ErrInvalid, chargenet.CodeInvalidConnector, "format"},
		{"power zero", 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(0.0)}, "", chargenet.ErrInvalid, chargenet.CodeInvalidBody, "maxElectricPower"},
		{"power over", 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(4000.01)}, "", chargenet.ErrInvalid, chargenet.CodeInvalidBody, "maxElectricPower"},
		{"amperage over", 1, chargenet.ConnectorPatch{MaxAmperage: ptr(3001.0)}, "", chargenet.ErrInvalid, chargenet.CodeInvalidBody, "maxAmperage"},
		{"voltage over", 1, chargenet.ConnectorPatch{MaxVoltage: ptr(1500.5)}, "", chargenet.ErrInvalid, chargenet.CodeInvalidBody, "maxVoltage"},
		{"bad enum", 1, chargenet.ConnectorPatch{Standard: ptr(chargenet.Standard("SCHUKO"))}, "", chargenet.ErrInvalid, chargenet.CodeInvalidBody, "standard"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := dcEVSE()
			before := dcEVSE()
			c, err := e.UpdateConnector(tt.connector, tt.patch, tt.ifMatch)
			if tt.kind == nil {
				require.NoError(t, err)
				assert.Equal(t, tt.patch.Apply(*before.Connector(tt.connector)), *c)
				assert.Equal(t, *c, *e.Connector(tt.connector), "applied in place")
				return
			}
			require.ErrorIs(t, err, tt.kind)
			var de *chargenet.Error
			require.True(t, errors.As(err, &de))
			assert.Equal(t, tt.code, de.Code)
			assert.Equal(t, tt.param, de.Param)
			assert.Equal(t, before, e, "a rejected update leaves the EVSE unchanged")
		})
	}
}

func TestRuleMessageNamesBothValues(t *testing.T) {
	e := dcEVSE()
	_, err := e.UpdateConnector(2, chargenet.ConnectorPatch{Standard: ptr(chargenet.StandardChademo)}, "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CHADEMO")
	assert.Contains(t, err.Error(), "AC_3_PHASE")
}

func TestEVSEValidate(t *testing.T) {
	for _, id := range []string{"DE*ABC*E123", "DEABCE123", "NL*A1B*E1*2*3", "FR*X12*EABC"} {
		e := dcEVSE()
		e.EvseID = id
		e.Connectors = e.Connectors[:2]
		assert.NoError(t, e.Validate(), id)
	}
	for _, id := range []string{"", "de*abc*e1", "DE*AB*E1", "DE*ABC*X1", "DE-ABC-E1", "DE*ABC*E"} {
		e := dcEVSE()
		e.EvseID = id
		err := e.Validate()
		assert.ErrorIs(t, err, chargenet.ErrInvalid, id)
	}
	e := dcEVSE()
	e.Connectors[1].PowerType = chargenet.PowerDC
	err := e.Validate()
	var de *chargenet.Error
	require.True(t, errors.As(err, &de))
	assert.Equal(t, "connectors[1].standard", de.Param)
	e = dcEVSE()
	e.Connectors[1].ID = 1
	require.True(t, errors.As(e.Validate(), &de))
	assert.Equal(t, "connectors[1].id", de.Param)
}

func TestDemoInventory(t *testing.T) {
	inv := chargenet.DemoInventory(time.Now())
	require.NoError(t, inv.Validate())
	assert.Len(t, inv.Locations, 120)
	assert.Len(t, inv.EVSEs, 40)
	var ac, dc, withError, deleted int
	for _, e := range inv.EVSEs {
		assert.True(t, len(e.Connectors) >= 1 && len(e.Connectors) <= 4)
		for _, c := range e.Connectors {
			if c.PowerType == chargenet.PowerDC {
				dc++
			} else {
				ac++
			}
			if c.Error != nil {
				withError++
			}
			if c.DeletedAt != nil {
				deleted++
			}
		}
	}
	assert.Positive(t, ac)
	assert.Positive(t, dc)
	assert.Positive(t, withError)
	assert.Equal(t, 1, deleted)
}

func TestInventoryValidateNamesRecord(t *testing.T) {
	inv := chargenet.DemoInventory(time.Now())
	inv.EVSEs[3].LocationID = "LOC 9999"
	err := inv.Validate()
	var de *chargenet.Error
	require.True(t, errors.As(err, &de))
	assert.Equal(t, "evses[3].locationId", de.Param)

	inv = chargenet.DemoInventory(time.Now())
	inv.Locations[7].Country = "DE"
	require.True(t, errors.As(inv.Validate(), &de))
	assert.Equal(t, "locations[7].country", de.Param)

	inv = chargenet.DemoInventory(time.Now())
	inv.EVSEs[9].UID = inv.EVSEs[2].UID
	require.True(t, errors.As(inv.Validate(), &de))
	assert.Equal(t, "evses[9].uid", de.Param)

	inv = chargenet.DemoInventory(time.Now())
	inv.Locations[1].TimeZone = "Mars/Olympus"
	require.True(t, errors.As(inv.Validate(), &de))
	assert.Equal(t, "locations[1].timeZone", de.Param)
}
