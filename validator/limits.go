package validator

import (
	"sort"
	"strconv"
)

// Layer 7: compute and limits. The job's parameters around the command: compute class, timeout,
// inline content size, staged input names; and the GPU routing of the command itself.

const layerLimits = "limits"

const (
	// DefaultTimeout is params.timeout when it is not given, in seconds.
	DefaultTimeout = 120
	// MaxTimeout is the largest params.timeout, in seconds.
	MaxTimeout = 900
	// MaxInlineBytes is the largest inline `content` input: 64 KB.
	MaxInlineBytes = 64 << 10
)

// gpuEncoders are the NVENC encoders (and their legacy aliases) that need a GPU runner.
var gpuEncoders = map[string]bool{
	"h264_nvenc": true, "hevc_nvenc": true, "av1_nvenc": true,
	"nvenc": true, "nvenc_h264": true, "nvenc_hevc": true,
}

// gpuDecoders are the CUDA decoders (cuvid); -hwaccel cuda is handled with the flag.
var gpuDecoders = map[string]bool{
	"h264_cuvid": true, "hevc_cuvid": true, "av1_cuvid": true, "vp9_cuvid": true,
	"vp8_cuvid": true, "mpeg2_cuvid": true, "mpeg4_cuvid": true, "mjpeg_cuvid": true,
}

// gpuCodecIndex says whether a codec name is a GPU decoder, a GPU encoder or neither, in one
// lookup.
var gpuCodecIndex = func() *strTable[gpuCodec] {
	m := map[string]gpuCodec{}
	for name := range gpuEncoders {
		m[name] = gpuEncoder
	}
	for name := range gpuDecoders {
		m[name] = gpuDecoder
	}
	return newStrTable(m)
}()

type gpuCodec uint8

const (
	gpuNone gpuCodec = iota
	gpuEncoder
	gpuDecoder
)

func limitErr(flag, value, format string, a ...any) *Error {
	return newError(layerLimits, flag, value, format, a...)
}

// checkOptions checks the job parameters around the command and returns the staged input names
// in sorted order, appended to names[:0] (reusing its memory when it has room).
func checkOptions(o *Options, names []string) ([]string, *Error) {
	switch o.Compute {
	case "", "auto", "cpu", "gpu":
	default:
		return nil, limitErr("", o.Compute, "compute %q is not one of auto, cpu, gpu", o.Compute)
	}
	if o.Timeout < 0 || o.Timeout > MaxTimeout {
		t := strconv.Itoa(o.Timeout)
		return nil, limitErr("", t, "timeout %s is out of range: 1 to %d seconds", t, MaxTimeout)
	}
	names = names[:0]
	if cap(names) < len(o.Inputs) {
		names = make([]string, 0, len(o.Inputs))
	}
	for name := range o.Inputs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if why := checkName(name, namePlain); why != "" {
			return nil, limitErr("", name, "input name %q %s", name, why)
		}
		in := o.Inputs[name]
		if in.Inline && (in.ContentSize < 0 || in.ContentSize > MaxInlineBytes) {
			return nil, limitErr("", name, "inline input %q is %d bytes, over the %d byte limit", name, in.ContentSize, MaxInlineBytes)
		}
	}
	return names, nil
}

// noteCodec records a GPU codec used by the command.
func (st *state) noteCodec(flag, name string) {
	if st.gpuReason != "" {
		return
	}
	switch gpuCodecIndex.get(name) {
	case gpuEncoder:
		st.gpuReason = "encoder " + name
	case gpuDecoder:
		st.gpuReason = "decoder " + name
	}
}

// compute decides the compute class: cpu refuses GPU work, gpu forces it, auto routes by what
// the command uses.
func (st *state) compute() (string, *Error) {
	switch st.opts.Compute {
	case "cpu":
		if st.gpuReason != "" {
			return "", limitErr("", st.gpuReason, "%s needs a GPU but compute is cpu", st.gpuReason)
		}
		return "cpu", nil
	case "gpu":
		return "gpu", nil
	}
	if st.gpuReason != "" {
		return "gpu", nil
	}
	return "cpu", nil
}

// WantsGPU reports whether a command asks for GPU work: an NVENC encoder, a CUVID decoder,
// -hwaccel cuda or -hwaccel_output_format cuda, or a CUDA or NPP filter. args are the words of
// the command after "ffmpeg" (Result.Args); a leading "ffmpeg" is skipped too. It reads the words
// as Validate does but checks nothing else, so it answers for any command, valid or not; route
// only commands Validate accepted.
func WantsGPU(args []string) bool {
	if len(args) > 0 && args[0] == "ffmpeg" {
		args = args[1:]
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		spec, _, err := lookupFlag(a)
		if err != nil || !spec.takesValue() || i+1 >= len(args) {
			continue
		}
		i++
		v := args[i]
		switch spec.kind {
		case vCodec:
			if gpuCodecIndex.get(v) != gpuNone {
				return true
			}
		case vHwaccel, vHwFormat:
			if v == "cuda" {
				return true
			}
		case vGraph:
			if graphWantsGPU(v) {
				return true
			}
		}
	}
	return false
}

func graphWantsGPU(graph string) bool {
	nodes, _ := parseGraph(graph)
	for _, n := range nodes {
		if spec := filterIndex.get(n.name); spec != nil && spec.gpu {
			return true
		}
	}
	return false
}
