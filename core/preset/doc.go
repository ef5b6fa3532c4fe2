// Package preset is an account's named FFmpeg templates: commands or chains of steps with typed
// variables ({{height}}), the placement rules that keep a value from ever becoming a flag or a
// path, the substitution that turns a template and values into a concrete command, and the
// built-in presets every account sees.
package preset
