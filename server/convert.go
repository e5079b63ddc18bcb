package server

import (
	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/gen"
)

func patchFromAPI(p *gen.ConnectorPatch) chargenet.ConnectorPatch {
	out := chargenet.ConnectorPatch{
		MaxElectricPower: p.MaxElectricPower,
		MaxAmperage:      p.MaxAmperage,
		MaxVoltage:       p.MaxVoltage,
		IfVersion:        derefInt(p.Version),
		TariffIDs:        p.TariffIds,
	}
	if p.PowerType != nil {
		pt := chargenet.PowerType(*p.PowerType)
		out.PowerType = &pt
	}
	if p.Standard != nil {
		s := chargenet.Standard(*p.Standard)
		out.Standard = &s
	}
	if p.Format != nil {
		f := chargenet.Format(*p.Format)
		out.Format = &f
	}
	return out
}
