package collect

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coroner-dev/coroner/bundle"
	"github.com/coroner-dev/coroner/frtrace"
)

// ReaderCommand is the subcommand of coroner a reader pod runs: ReaderArgs builds its argv.
const ReaderCommand = "flight-recorder-read"

// ReaderLabel marks the reader pods, on app.kubernetes.io/name.
const ReaderLabel = "coroner-fr-reader"

// ReaderArgs is the fixed argv (after the image's entrypoint, coroner) of a reader pod.
func ReaderArgs(prefix string, max int64) []string {
	return []string{ReaderCommand, "--max-bytes", strconv.FormatInt(max, 10), "--", prefix}
}

// ReadLocalDumps is what a reader pod runs: it writes each dump <prefix><rank> of the local
// filesystem to w as one line "NAME BASE64" (a log line survives any byte of a pickle),
// sorted by name, or "NAME !REASON" when it cannot be read or is over max bytes.
func ReadLocalDumps(ctx context.Context, prefix string, max int64, w io.Writer) error {
	dir, base := filepath.Dir(prefix), filepath.Base(prefix)
	if strings.HasSuffix(prefix, "/") {
		dir, base = filepath.Clean(prefix), ""
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var names []string
	for _, e := range entries {
		if name := e.Name(); strings.HasPrefix(name, base) && name != base && e.Type().IsRegular() {
			if _, ok := frtrace.RankFromName(name); ok {
				names = append(names, name)
			}
		}
	}
	sort.Strings(names)
	bw := bufio.NewWriter(w)
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		data, err := readBounded(filepath.Join(dir, name), max)
		if err != nil {
			fmt.Fprintf(bw, "%s !%s\n", name, oneLine(err.Error()))
			continue
		}
		fmt.Fprintf(bw, "%s %s\n", name, base64.StdEncoding.EncodeToString(data))
	}
	return bw.Flush()
}

func readBounded(name string, max int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("over %d bytes", max)
	}
	return data, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// dumpClaim is the PersistentVolumeClaim that holds a container's dump prefix, with its
// mount, or false when the prefix is on no claim the container mounts.
func dumpClaim(p *corev1.Pod, c corev1.Container, prefix string) (string, corev1.VolumeMount, bool) {
	dir := path.Dir(prefix)
	var best corev1.VolumeMount
	for _, m := range c.VolumeMounts {
		mp := path.Clean(m.MountPath)
		if (dir == mp || strings.HasPrefix(dir, mp+"/")) && len(mp) > len(best.MountPath) {
			best = m
		}
	}
	if best.Name == "" {
		return "", best, false
	}
	for _, v := range p.Spec.Volumes {
		if v.Name == best.Name && v.PersistentVolumeClaim != nil {
			return v.PersistentVolumeClaim.ClaimName, best, true
		}
	}
	return "", best, false
}

// readerPod is the reader of a claim: the same image as coroner, its fixed argv, the claim
// mounted read-only where the job mounted it, on the job's node (where a ReadWriteOnce
// volume is attached), no service account token, no privilege, a deadline.
func readerPod(p *corev1.Pod, claim string, m corev1.VolumeMount, prefix, image string, max int64, timeout time.Duration) *corev1.Pod {
	f, t := false, true
	user := int64(65532)
	deadline := int64(timeout / time.Second)
	grace := int64(0)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "coroner-fr-reader-", Namespace: p.Namespace, Labels: map[string]string{
			"app.kubernetes.io/name": ReaderLabel, "app.kubernetes.io/managed-by": "coroner"}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, NodeName: p.Spec.NodeName,
			AutomountServiceAccountToken: &f, EnableServiceLinks: &f,
			ActiveDeadlineSeconds: &deadline, TerminationGracePeriodSeconds: &grace,
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &t, RunAsUser: &user, RunAsGroup: &user,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "read", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
				Args:         ReaderArgs(prefix, max),
				VolumeMounts: []corev1.VolumeMount{{Name: "dumps", MountPath: m.MountPath, SubPath: m.SubPath, ReadOnly: true}},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &f, ReadOnlyRootFilesystem: &t,
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
			Volumes: []corev1.Volume{{Name: "dumps", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: true}}}},
		},
	}
}

// DefaultReaderTimeout bounds a reader pod, from its creation to its end.
const DefaultReaderTimeout = 2 * time.Minute

// readByPod reads the dumps of a container that is not running from the claim that holds
// them, with a reader pod (Options.ReaderImage), deleted afterwards whatever happened.
func (col *collector) readByPod(ctx context.Context, p *corev1.Pod, c corev1.Container, prefix, object string) error {
	o := col.opts
	claim, mount, ok := dumpClaim(p, c, prefix)
	if !ok {
		col.gap("exec", object, "not running, and its flight recorder dumps (%s*) are on no PersistentVolumeClaim it mounts: they went with the container", prefix)
		return nil
	}
	pods := col.c.Kube.CoreV1().Pods(p.Namespace)
	rp, err := pods.Create(ctx, readerPod(p, claim, mount, prefix, o.ReaderImage, o.MaxFlightRecordBytes, o.ReaderTimeout), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("reader pod for claim %s: %w", claim, err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		grace := int64(0)
		if err := pods.Delete(ctx, rp.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil && !apierrors.IsNotFound(err) {
			col.gap("exec", object, "reader pod %s not deleted: %s", rp.Name, describe(err))
		}
	}()
	wctx, cancel := context.WithTimeout(ctx, o.ReaderTimeout)
	defer cancel()
	for {
		cur, err := pods.Get(wctx, rp.Name, metav1.GetOptions{})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("reader pod %s (claim %s) did not finish within %s: %s", rp.Name, claim, o.ReaderTimeout, describe(err))
		}
		if cur.Status.Phase == corev1.PodSucceeded || cur.Status.Phase == corev1.PodFailed {
			if cur.Status.Phase == corev1.PodFailed {
				return fmt.Errorf("reader pod %s (claim %s) failed: %s", rp.Name, claim, terminatedMessage(cur))
			}
			break
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("reader pod %s (claim %s) did not finish within %s", rp.Name, claim, o.ReaderTimeout)
		case <-time.After(time.Second):
		}
	}
	limit := o.MaxFlightRecordBytes*4/3 + 4096
	rc, err := pods.GetLogs(rp.Name, &corev1.PodLogOptions{Container: "read"}).Stream(wctx)
	if err != nil {
		return fmt.Errorf("reader pod %s's output: %s", rp.Name, describe(err))
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64<<10), int(limit))
	n := 0
	for sc.Scan() {
		name, payload, _ := strings.Cut(sc.Text(), " ")
		if _, ok := frtrace.RankFromName(name); !ok || strings.ContainsAny(name, "/\x00") {
			continue
		}
		n++
		if reason, bad := strings.CutPrefix(payload, "!"); bad {
			if strings.HasPrefix(reason, "over ") {
				col.limitGap("exec", object, bundle.LimitFileBytes, "flight recorder dump %s is %s: not kept", name, reason)
			} else {
				col.gap("exec", object, "flight recorder dump %s: %s", name, reason)
			}
			continue
		}
		data, err := base64.StdEncoding.DecodeString(payload)
		if err == nil {
			err = col.writeDump(ctx, p, name, data)
		}
		if err != nil {
			col.gap("exec", object, "flight recorder dump %s: %v", name, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reader pod %s's output: %w", rp.Name, err)
	}
	if n == 0 {
		col.gap("exec", object, "no flight recorder dump at %s* on claim %s", prefix, claim)
	}
	return nil
}

func terminatedMessage(p *corev1.Pod) string {
	for _, s := range p.Status.ContainerStatuses {
		if t := s.State.Terminated; t != nil {
			return strings.TrimSpace(fmt.Sprintf("exit code %d %s %s", t.ExitCode, t.Reason, oneLine(t.Message)))
		}
	}
	if p.Status.Reason != "" {
		return p.Status.Reason + ": " + p.Status.Message
	}
	return "no reason given"
}
