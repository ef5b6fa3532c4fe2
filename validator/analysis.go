package validator

import "strconv"

// Analysis commands and two-pass encoding. A command that measures rather than writes ends in
// -f null -: the null muxer discards what it is given, and what the job answers is what the
// filters printed (loudnorm's print_format=json, ebur128's summary, silencedetect's and
// blackdetect's intervals, showinfo's frames). "-" is accepted only there: anywhere else it is
// standard output, which the runner reads as FFmpeg's progress. -f null with a file name is
// refused too, rather than read as a file that will never exist: FFmpeg's habit of
// "-f null /dev/null" becomes "-f null -". A command that measures writes no file beside it: a
// job answers either files or data, never both.
//
// -pass 1 and -pass 3 write the two-pass log, -pass 2 reads it. Its name is -passlogfile's
// prefix (FFmpeg's default "ffmpeg2pass") followed by "-N.log", N the output stream's index;
// libx264 adds NAME-N.log.mbtree and libx265 NAME-N.log.cutree, each written first as a
// ".temp" file. The prefix is a bare name like every written name, and those files are side
// files of the plan.

// nullOutputName is the only output name -f null accepts.
const nullOutputName = "-"

// defaultPassLog is FFmpeg's pass log prefix when -passlogfile is not given.
const defaultPassLog = "ffmpeg2pass"

// passLogSuffixes are the files written from a pass log prefix, after "PREFIX-N".
var passLogSuffixes = []string{".log", ".log.temp", ".log.mbtree", ".log.mbtree.temp", ".log.cutree", ".log.cutree.temp"}

// passLogRoom is the longest suffix a prefix gets, "-NN" and the longest of passLogSuffixes.
const passLogRoom = len("-99.log.mbtree.temp")

// checkNullOutput checks an output that is "-" or follows -f null: only the two together.
func checkNullOutput(format, name string) *Error {
	if format != "null" {
		return pathErr("", name, "output %q (standard output) is allowed only as -f null -, an analysis that writes nothing", name)
	}
	if name != nullOutputName {
		return formatErr("-f", "null", "-f null writes nothing: its output must be -, not %q", name)
	}
	return nil
}

// nullOutputs is checkOutputs' answer for a command with a -f null - output: file is one of
// its file outputs, nil when there is none. A command that measures writes no file: its answer
// is data, which a job that writes files does not have.
func nullOutputs(outputFormat string, file *output) (format, pattern string, err *Error) {
	if file != nil {
		return "", "", outputErr(file.name, "output %q cannot be beside -f null -: a command that measures writes no file; write it in another job", file.name)
	}
	if outputFormat != "" {
		return "", "", outputErr(outputFormat, "outputFormat %q does not apply: the command writes no file (-f null -)", outputFormat)
	}
	return "null", PatternData, nil
}

// checkPass checks -pass: 1 and 3 write the pass log.
func (st *state) checkPass(flag, v string) *Error {
	if e := checkEnum(layerFlags, flag, v, "1", "2", "3"); e != nil {
		return e
	}
	if v != "2" {
		st.passWrites = true
	}
	return nil
}

// checkPassLogFile checks a -passlogfile prefix: a bare name with room for what is appended.
func (st *state) checkPassLogFile(flag, v string) *Error {
	if why := checkName(v, namePlain); why != "" {
		return pathErr(flag, v, "%s value %q %s", flag, v, why)
	}
	if len(v) > maxNameBytes-passLogRoom {
		return pathErr(flag, v, "%s value %q is longer than %d bytes, leaving no room for the log's suffix", flag, v, maxNameBytes-passLogRoom)
	}
	st.passLogs = append(st.passLogs, v)
	return nil
}

// addPassLogs records the pass log files as side files when a pass writes them, as numbered
// patterns (PREFIX-%d.log), and refuses a staged input that the log of one of the first
// streams would replace. It runs once every input is known.
func (st *state) addPassLogs() *Error {
	if !st.passWrites {
		return nil
	}
	prefixes := st.passLogs
	if len(prefixes) == 0 {
		prefixes = []string{defaultPassLog}
	}
	what := subject{"-passlogfile", " log file"}
	for _, p := range prefixes {
		for _, suffix := range passLogSuffixes {
			st.sideFiles = append(st.sideFiles, sideFile{flag: "-passlogfile", what: what, name: p + "-%d" + suffix})
			for n := range passLogStreams {
				if name := p + "-" + strconv.Itoa(n) + suffix; st.isInputName(name) {
					return pathErr("-passlogfile", p, "-passlogfile log file %q would overwrite input %q", name, name)
				}
			}
		}
	}
	return nil
}

// passLogStreams is how many output streams' logs addPassLogs checks against the inputs.
const passLogStreams = 4
