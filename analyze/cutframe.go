package analyze

import (
	"bytes"
	"strings"
)

// A traceback pasted or printed only in part ends in its frames, before the exception line
// that would name the error: the process was raising there when its output stopped, or the
// paste was cut. Its innermost frame still says which subsystem failed, and for a few of them
// which error is by far the most common one raised there. Named from the frame alone, such a
// cause is a guess: it is given at low confidence, and only when the words of the failure
// name nothing (classifyTerminal).
//
// The frames and the errors they end in, each shown whole in public threads:
//   - a file opened, as torch.load and torch.save open theirs ("return _open_file(name_or_buffer,
//     mode)", "super().__init__(open(name, mode))"): FileNotFoundError, a path that is not there
//     (OpenGVLab/Diffree#1, naszilla/tabzilla#33 on load; thunlp/OpenKE#389,
//     aimagelab/meshed-memory-transformer#85 on save);
//   - a checkpoint written: a checkpoint engine's save ("self.checkpoint_engine.save(zero_sd,
//     zero_checkpoint_name)"), then torch.save's "zip_file.write_record(...)", ends in
//     "PytorchStreamWriter failed writing file ...: file write failed", the disk full
//     (OpenMOSS/MOSS#270, hkust-nlp/simpleRL-reason#19). Any other write may end in anything
//     (a socket's, a closed file's), and torch.save itself opens its file first;
//   - the Google Cloud Storage client uploading or downloading ("google/cloud/storage/blob.py
//     ... in _do_upload"): the request failed (blobfile/blobfile#1, googleapis/python-storage#237);
//     AWS's ("boto3/s3/transfer.py", "s3transfer/upload.py", "botocore/awsrequest.py"): the
//     connection to S3 closed or failed (boto/boto3#2343, treeverse/dvc#5204);
//   - vLLM sizing its KV cache at start-up ("vllm/v1/engine/core.py ... in _initialize_kv_caches",
//     "kv_cache_utils.py ... in get_kv_cache_configs"): "ValueError: No available memory for the
//     cache blocks. Try increasing `gpu_memory_utilization`" (wtdcode/vllm-backport#15,
//     vllm-project/vllm-omni#4475);
//   - DeepSpeed checking its configuration ("deepspeed/runtime/config.py ... in _batch_assertion",
//     "assert train_batch == micro_batch * grad_acc * self.world_size"): "AssertionError: Check
//     batch related parameters. train_batch_size is not equal to micro_batch_per_gpu *
//     gradient_acc_step * world_size" (bigcode-project/starcoder#77, deepspeedai/DeepSpeed#3228);
//     every check in that file is of the configuration the job was given;
//   - torchelastic's rendezvous handler ("torch/distributed/elastic/rendezvous/etcd_rendezvous.py
//     ... in next_rendezvous"): the rendezvous failed (pytorch/pytorch#132950, #123714, kubeflow/trainer#1638);
//   - diffusers enabling xFormers' attention ("diffusers/models/modeling_utils.py ... in
//     fn_recursive_set_mem_eff", "... in set_use_memory_efficient_attention_xformers"): the check
//     it runs there finds xFormers missing, or runs its own small attention and gets "No
//     operator found" from an xFormers built for another torch, CUDA or a CPU-only torch
//     (showlab/Tune-A-Video#97, d8ahazard/sd_dreambooth_extension#98, liuyixin-louis/MetaCloak#2):
//     the environment, not the training code, whose tensors it has not seen yet.

// cutFrame is a kind of innermost frame, by what each of its non-empty lists names (one of
// each): a fragment of the frame's file path, its function, a call its code makes; and the
// category of the error it most often ends in.
type cutFrame struct {
	category            Category
	paths, funcs, calls []string
}

// cutFrames are tried in order: a library's subsystem by its path first, then the call.
var cutFrames = []cutFrame{
	{category: CategoryRendezvous, paths: []string{"distributed/elastic/rendezvous/"}},
	// DeepSpeed's checks of the configuration it was given, not every call in that file (its
	// __init__ also asks the process group for the world size).
	{category: CategoryConfigError, paths: []string{"deepspeed/runtime/config.py"}, funcs: []string{
		"_batch_assertion", "_configure_train_batch_size", "_set_batch_related_parameters", "_do_error_check", "_do_sanity_check"}},
	{category: CategoryStorageError, paths: []string{"google/cloud/storage/", "botocore/", "boto3/", "s3transfer/"}},
	{category: CategoryCUDAOOM, paths: []string{"vllm/"}, funcs: []string{
		"_initialize_kv_caches", "initialize_cache", "determine_num_available_blocks", "get_kv_cache_configs",
		"check_enough_kv_cache_memory", "_check_enough_kv_cache_memory", "raise_if_cache_size_invalid"}},
	{category: CategoryModuleNotFound, paths: []string{"diffusers/"}, funcs: []string{
		"fn_recursive_set_mem_eff", "set_use_memory_efficient_attention_xformers", "enable_xformers_memory_efficient_attention"}},
	{category: CategoryFileNotFound, calls: []string{"open(", "_open_file(", "_open_file_like("}},
	{category: CategoryDiskFull, calls: []string{".write_record(", "checkpoint_engine.save("}},
}

// minPastedFrames is how many frames a log must end in to be read as a traceback without
// its header: one File line may be anything's.
const minPastedFrames = 2

// trailingFrames is the first line of the frames the lines end in (File lines and the
// indented code under them, blank lines aside), -1 when they end otherwise or in fewer than
// minPastedFrames frames.
func trailingFrames(lines []tailLine) int {
	first, frames := -1, 0
	for i := len(lines) - 1; i >= 0; i-- {
		t := lines[i].text
		trim := bytes.TrimSpace(t)
		switch {
		case len(trim) == 0:
		case bytes.HasPrefix(trim, []byte(`File "`)) && bytes.Contains(trim, []byte(`", line `)):
			first, frames = i, frames+1
		case t[0] == ' ' || t[0] == '\t':
		default:
			if frames < minPastedFrames {
				return -1
			}
			return first
		}
	}
	if frames < minPastedFrames {
		return -1
	}
	return first
}

// lastNonBlank is the index of the last line of lines that is not blank, -1 when none is.
func lastNonBlank(lines []tailLine) int {
	for i := len(lines) - 1; i >= 0; i-- {
		if len(bytes.TrimSpace(lines[i].text)) > 0 {
			return i
		}
	}
	return -1
}

// maxFrameLines bounds the lines of the innermost frame read: its File line and its code
// (a call that spans lines, pointers under it).
const maxFrameLines = 4

// innermostFrame is the last frame of a traceback the lines end inside: its File line and
// the lines after it, nil when the lines hold none.
func innermostFrame(lines []tailLine, inFrames []bool, header int) []tailLine {
	for i := len(lines) - 1; i > header; i-- {
		if !inFrames[i] {
			continue
		}
		if bytes.HasPrefix(bytes.TrimSpace(lines[i].text), []byte(`File "`)) {
			return cloneLines(lines[i:min(len(lines), i+maxFrameLines)])
		}
	}
	return nil
}

// cloneLines copies lines with their text, which the tail buffer reuses.
func cloneLines(lines []tailLine) []tailLine {
	out := make([]tailLine, 0, len(lines))
	for _, l := range lines {
		l.text = bytes.Clone(l.text)
		out = append(out, l)
	}
	return out
}

// classifyFrame names the category of the error innermost frame frame most often ends in,
// and the words of the frame that say so.
func classifyFrame(frame []tailLine) (Category, string, bool) {
	if len(frame) == 0 {
		return "", "", false
	}
	head := string(bytes.TrimSpace(frame[0].text))
	path := head[len(`File "`):]
	if i := strings.IndexByte(path, '"'); i >= 0 {
		path = path[:i]
	}
	path = strings.ReplaceAll(path, `\`, "/")
	var code strings.Builder
	for _, l := range frame[1:] {
		code.Write(bytes.TrimSpace(l.text))
		code.WriteByte(' ')
	}
	fn := ""
	if i := strings.LastIndex(head, ", in "); i >= 0 {
		fn = strings.TrimSpace(head[i+len(", in "):])
	}
	for _, cf := range cutFrames {
		var said []string
		if len(cf.paths) > 0 {
			p, ok := firstOf(cf.paths, func(p string) bool { return strings.Contains(path, p) })
			if !ok {
				continue
			}
			said = append(said, p)
		}
		if len(cf.funcs) > 0 {
			f, ok := firstOf(cf.funcs, func(f string) bool { return fn == f })
			if !ok {
				continue
			}
			said = append(said, "in "+f)
		}
		if len(cf.calls) > 0 {
			c, ok := firstOf(cf.calls, func(c string) bool { return callIn(code.String(), c) })
			if !ok {
				continue
			}
			said = append(said, c)
		}
		return cf.category, strings.Join(said, " "), true
	}
	return "", "", false
}

// firstOf is the first of ws that ok takes.
func firstOf(ws []string, ok func(string) bool) (string, bool) {
	for _, w := range ws {
		if ok(w) {
			return w, true
		}
	}
	return "", false
}

// callIn says whether code calls c: a call of a method (".write_record(") anywhere, a name
// ("open(") only where no identifier or attribute goes on before it ("Image.open(" is no
// file's open), a dotted name ("checkpoint_engine.save(") after an attribute too.
func callIn(code, c string) bool {
	for i := 0; ; {
		j := strings.Index(code[i:], c)
		if j < 0 {
			return false
		}
		j += i
		i = j + 1
		if c[0] == '.' || j == 0 || !isWordByte(code[j-1]) && (code[j-1] != '.' || strings.Contains(c, ".")) {
			return true
		}
	}
}
