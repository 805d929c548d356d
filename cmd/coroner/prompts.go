package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/coroner-dev/coroner/narrate"
)

// NewCmdPrompts builds `coroner prompts list|show`.
func NewCmdPrompts(ios *IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "prompts",
		Short: "List and print the LLM prompt templates",
		Long: `Prompt templates are Go text/template files, one per job kind (pytorchjob.tmpl serves
PyTorchJob), default.tmpl for the other kinds and role.tmpl for --llm-per-role. To change one,
print it, edit it, and point 'coroner analyze --llm --prompt-dir DIR' at the directory holding it:

  mkdir prompts && coroner prompts show pytorchjob > prompts/pytorchjob.tmpl

README.md lists every variable a template can use.
`,
	}
	var dir string
	list := &cobra.Command{
		Use:   "list",
		Short: "List the templates: name, version, source",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			ts, err := narrate.LoadTemplates(c.Context(), dir)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(ios.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tVERSION\tSOURCE")
			for _, t := range ts.List() {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name, orNone(t.Version), t.Source)
			}
			return tw.Flush()
		},
	}
	show := &cobra.Command{
		Use:   "show NAME",
		Short: "Print a template (a job kind such as pytorchjob, or default, or role)",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			ts, err := narrate.LoadTemplates(c.Context(), dir)
			if err != nil {
				return err
			}
			t, ok := ts.Get(args[0])
			if !ok {
				return flagErrorf("no prompt template %q: 'coroner prompts list' shows them", args[0])
			}
			_, err = ios.Out.Write([]byte(t.Text))
			return err
		},
	}
	for _, c := range []*cobra.Command{list, show} {
		c.Flags().StringVar(&dir, "prompt-dir", "", "include the templates in `DIR`, as analyze --prompt-dir does")
	}
	cmd.AddCommand(list, show)
	return cmd
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
