// This folder is its own (empty) module so that it is left out of
// onecore's module zip: `go install github.com/onecore-dev/onecore/cmd/onecore@latest`
// would otherwise download the ~106 MB training-run snapshot kept here for
// resuming the base model's run across sessions (train/recipes/base.sh).
module github.com/onecore-dev/onecore/train/recipes/state

go 1.26
