package analyze

import (
	"bytes"
	"regexp"
	"strings"
)

// A TypeError that a class does not take a keyword argument is a bug of the code that made
// the call, or two packages at versions that do not fit together. Python raises it in the
// caller's frame, the traceback's innermost one: when that frame is the training script's, the
// script calls an API with an argument it does not have (user-code-error, a TRL or transformers
// argument that was renamed). When it is an installed package's, that package constructs a
// class of another package (trl's vllm-serve building vLLM's EngineArgs, huggingface/trl#3304)
// or of its own, forwarding its caller's arguments (vLLM's LLM building EngineArgs from a
// benchmark script of a newer release, vllm-project/vllm#548 and #3249), with an argument the
// installed version does not know: the environment's versions, not the script, are what is
// wrong, and reinstalling the versions that go together is the fix. The words of the two are
// the same; only the frame tells them apart, and not surely (a callback of the script's, or
// arguments the script passed through), so the cause it names is low confidence.

// initKwarg matches the exception of a constructor given a keyword argument it does not take:
// "TypeError: EngineArgs.__init__() got an unexpected keyword argument 'worker_extension_cls'"
// (Python 3.10 and later name the class; before, "__init__() got ...").
var initKwarg = regexp.MustCompile(`\bTypeError: (?:(?P<class>[A-Za-z_][\w.]*)\.)?__init__\(\) got an unexpected keyword argument '(?P<arg>[^']+)'`)

// installedFrame matches a traceback's File line in an installed package, and names the
// package: `File "/usr/local/lib/python3.10/dist-packages/vllm/entrypoints/llm.py", line 212`.
var installedFrame = regexp.MustCompile(`File "[^"]*[/\\](?:site|dist)-packages[/\\](?P<pkg>[A-Za-z_][\w]*)[/\\][^"]*", line \d+`)

// consoleScript matches a traceback's File line in an installed command's entry script
// (`File "/usr/local/bin/trl", line 8, in <module>`).
var consoleScript = regexp.MustCompile(`File "[^"]*[/\\]bin[/\\][\w.-]+", line \d+`)

// libraryCall is an installed package's call that constructed a class with a keyword argument
// the class does not take: the package (pkg), the class, the argument.
type libraryCall struct {
	pkg, class, arg string
}

// libraryInit says whether tf's failure is a constructor given a keyword argument it does not
// take, called from an installed package's frame that does not pass on arguments of its own
// caller's (`cls(config, *model_args, **model_kwargs)`: whose argument that is, the frame does
// not say), and returns the call.
func libraryInit(tf *terminalFailure) *libraryCall {
	if len(tf.lines) == 0 || len(tf.caller) == 0 {
		return nil
	}
	m := initKwarg.FindStringSubmatch(string(tf.lines[len(tf.lines)-1].text))
	if m == nil {
		return nil
	}
	// The innermost frame, and the one above it when the paste has it.
	inner, outer := -1, -1
	for i, l := range tf.caller {
		if bytes.HasPrefix(bytes.TrimSpace(l.text), []byte(`File "`)) {
			inner, outer = i, inner
		}
	}
	if inner < 0 {
		return nil
	}
	f := installedFrame.FindStringSubmatch(string(tf.caller[inner].text))
	if f == nil {
		return nil
	}
	// The frame that called the package is the package's too, or a console script's: a
	// script's frame above it may have handed it the argument (a typo in LLM(...) that vLLM
	// passes on to EngineArgs in a line Python does not print).
	if outer >= 0 && !installedFrame.MatchString(string(tf.caller[outer].text)) && !consoleScript.MatchString(string(tf.caller[outer].text)) {
		return nil
	}
	for _, l := range tf.caller[inner+1:] {
		if strings.Contains(string(l.text), "**") {
			return nil
		}
	}
	class := m[initKwarg.SubexpIndex("class")]
	if class == "" {
		class = "a class"
	} else {
		class = "'" + class + "'"
	}
	return &libraryCall{pkg: f[installedFrame.SubexpIndex("pkg")], class: class, arg: m[initKwarg.SubexpIndex("arg")]}
}

// callerFrame is the frame right above the log's last exception line, the call that raised
// it, and the frame above that when the paste has it: their File lines and code, nil when no
// File line is within maxFrameLines above the exception (a paste may keep the frame without
// the traceback's header).
func callerFrame(lines []tailLine, kinds []lineKind) []tailLine {
	isFile := func(k int) bool { return bytes.HasPrefix(bytes.TrimSpace(lines[k].text), []byte(`File "`)) }
	for j := len(lines) - 1; j >= 0; j-- {
		if kinds[j] != kindException {
			continue
		}
		for k := j - 1; k >= 0 && k >= j-maxFrameLines; k-- {
			if !isFile(k) {
				continue
			}
			from := k
			for o := k - 1; o >= 0 && o >= k-maxFrameLines; o-- {
				if isFile(o) {
					from = o
					break
				}
			}
			return cloneLines(lines[from:j])
		}
		return nil
	}
	return nil
}
