package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/coroner-dev/coroner/narrate"
)

// NewCmdPrompts builds `coroner prompts list|show`.
func NewCmdPrompts(io *IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "prompts",
		Short: "List and print the LLM prompt templates",
		Long: `Prompt templates are Go text/template files, one per job kind (pytorchjob.tmpl serves
PyTorchJob), default.tmpl for the other kinds and role.tmpl for --llm-per-role. To change one,
print it, edit it, and point 'coroner analyze --llm --prompt-dir DIR' at the directory holding it:

  mkdir prompts && coroner prompts show pytorchjob > prompts/pytorchjob.tmpl

docs/llm.md lists every variable a template can use.
`,
	}
	cmd.AddCommand(NewCmdPromptsList(io, nil), NewCmdPromptsShow(io, nil))
	return cmd
}

// PromptsOptions hold what `coroner prompts list|show` need.
type PromptsOptions struct {
	// PromptDir holds templates that override the built-in ones.
	PromptDir string
	// Name is the template `prompts show` prints.
	Name string
}

func addPromptDirFlag(cmd *cobra.Command, opts *PromptsOptions) {
	cmd.Flags().StringVar(&opts.PromptDir, "prompt-dir", "", "include the templates in `DIR`, as analyze --prompt-dir does")
}

// NewCmdPromptsList builds `coroner prompts list`. runF replaces the run function in tests.
func NewCmdPromptsList(io *IOStreams, runF func(*PromptsOptions) error) *cobra.Command {
	opts := &PromptsOptions{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the templates: name, version, source",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runPromptsList(c.Context(), opts, io)
		},
	}
	addPromptDirFlag(cmd, opts)
	return cmd
}

func runPromptsList(ctx context.Context, opts *PromptsOptions, io *IOStreams) error {
	ts, err := narrate.LoadTemplates(ctx, opts.PromptDir)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(io.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tSOURCE")
	for _, t := range ts.List() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name, orNone(t.Version), t.Source)
	}
	return tw.Flush()
}

// NewCmdPromptsShow builds `coroner prompts show`. runF replaces the run function in tests.
func NewCmdPromptsShow(io *IOStreams, runF func(*PromptsOptions) error) *cobra.Command {
	opts := &PromptsOptions{}
	cmd := &cobra.Command{
		Use:   "show NAME",
		Short: "Print a template (a job kind such as pytorchjob, or default, or role)",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(opts)
			}
			return runPromptsShow(c.Context(), opts, io)
		},
	}
	addPromptDirFlag(cmd, opts)
	return cmd
}

func runPromptsShow(ctx context.Context, opts *PromptsOptions, io *IOStreams) error {
	ts, err := narrate.LoadTemplates(ctx, opts.PromptDir)
	if err != nil {
		return err
	}
	t, ok := ts.Get(opts.Name)
	if !ok {
		return flagErrorf("no prompt template %q: 'coroner prompts list' shows them", opts.Name)
	}
	_, err = io.Out.Write([]byte(t.Text))
	return err
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
