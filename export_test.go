package chargenet

// Renderers are the renderers of each event type and payload version (renderers).
var Renderers = renderers
