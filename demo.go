package chargenet

import (
	"fmt"
	"time"
)

// DemoInventory returns the deterministic demo data loaded by `chargenet serve --demo`:
// 120 locations in five cities and 40 EVSEs (two at each of the first 20 locations) with
// 1 to 4 connectors each, AC and DC mixed, some with an error and one connector deleted.
func DemoInventory(now time.Time) *Inventory {
	now = now.UTC().Truncate(time.Second)
	type city struct {
		name, country, postal, tz string
		lat, lon                  float64
	}
	cities := []city{
		{"Berlin", "DEU", "10178", "Europe/Berlin", 52.52, 13.405},
		{"Amsterdam", "NLD", "1012", "Europe/Amsterdam", 52.3676, 4.9041},
		{"Paris", "FRA", "75001", "Europe/Paris", 48.8566, 2.3522},
		{"Oslo", "NOR", "0150", "Europe/Oslo", 59.9139, 10.7522},
		{"Vienna", "AUT", "1010", "Europe/Vienna", 48.2082, 16.3738},
	}
	inv := &Inventory{}
	for i := 0; i < 120; i++ {
		c := cities[i%len(cities)]
		inv.Locations = append(inv.Locations, Location{
			ID:          fmt.Sprintf("LOC-%04d", i+1),
			Name:        fmt.Sprintf("%s Charging Hub %d", c.name, i/len(cities)+1),
			Address:     fmt.Sprintf("Hauptstrasse %d", i+1),
			City:        c.name,
			PostalCode:  c.postal,
			Country:     c.country,
			Latitude:    c.lat + float64(i)*0.001,
			Longitude:   c.lon + float64(i)*0.001,
			TimeZone:    c.tz,
			LastUpdated: now,
		})
	}
	ac := []Connector{
		{Standard: StandardIEC62196T2, Format: FormatSocket, PowerType: PowerAC3Phase, MaxElectricPower: 22, MaxAmperage: 32, MaxVoltage: 400, TariffIDs: []string{"AC-STANDARD"}},
		{Standard: StandardIEC62196T1, Format: FormatCable, PowerType: PowerAC1Phase, MaxElectricPower: 7.4, MaxAmperage: 32, MaxVoltage: 230, TariffIDs: []string{"AC-STANDARD"}},
		{Standard: StandardGBTAC, Format: FormatSocket, PowerType: PowerAC3Phase, MaxElectricPower: 11, MaxAmperage: 16, MaxVoltage: 400, TariffIDs: []string{}},
	}
	dc := []Connector{
		{Standard: StandardIEC62196T2Combo, Format: FormatCable, PowerType: PowerDC, MaxElectricPower: 150, MaxAmperage: 375, MaxVoltage: 920, TariffIDs: []string{"DC-FAST"}},
		{Standard: StandardChademo, Format: FormatCable, PowerType: PowerDC, MaxElectricPower: 50, MaxAmperage: 125, MaxVoltage: 500, TariffIDs: []string{"DC-FAST"}},
		{Standard: StandardIEC62196T1Combo, Format: FormatCable, PowerType: PowerDC, MaxElectricPower: 350, MaxAmperage: 500, MaxVoltage: 1000, TariffIDs: []string{"DC-FAST", "DC-ROAMING"}},
		{Standard: StandardGBTDC, Format: FormatCable, PowerType: PowerDC, MaxElectricPower: 120, MaxAmperage: 250, MaxVoltage: 750, TariffIDs: []string{}},
	}
	statuses := []EvseStatus{StatusAvailable, StatusCharging, StatusAvailable, StatusBlocked, StatusReserved, StatusAvailable, StatusOutOfOrder, StatusInoperative}
	errCodes := []ErrorCode{"GroundFailure", "HighTemperature", "EVCommunicationError"}
	for i := 0; i < 40; i++ {
		uid := int64(1001 + i)
		e := EVSE{
			UID:         uid,
			EvseID:      fmt.Sprintf("DE*CNT*E%d*1", uid),
			ChargeboxID: int64(501 + i/2),
			LocationID:  fmt.Sprintf("LOC-%04d", i/2+1),
			Status:      statuses[i%len(statuses)],
			LastUpdated: now,
			Version:     1,
		}
		n := i%4 + 1
		for j := 0; j < n; j++ {
			var c Connector
			if i%2 == 0 {
				c = ac[(i+j)%len(ac)]
			} else {
				c = dc[(i+j)%len(dc)]
			}
			c.ID = int64(j + 1)
			c.TariffIDs = append([]string{}, c.TariffIDs...)
			if (i+j)%7 == 3 {
				c.Error = &ConnectorError{Code: errCodes[(i+j)%len(errCodes)], Info: "reported by charge box", VendorErrorCode: fmt.Sprintf("E-%03d", i+j)}
			}
			e.Connectors = append(e.Connectors, c)
		}
		if uid == 1004 { // the one deleted connector: 1004 has four
			d := now.Add(-24 * time.Hour)
			e.Connectors[3].DeletedAt = &d
		}
		inv.EVSEs = append(inv.EVSEs, e)
	}
	return inv
}
