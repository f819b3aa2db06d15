package model

import "fmt"

// withDefaults fills zero fields of o with the paper's values, each on its
// own: Config{Epochs: 5} trains 5 epochs of the paper's network. The fields
// that must be positive (the sizes, TauInit, LearningRate, Epochs, the
// recovery window) take their default whenever they are zero. The weights
// and switches where zero is a setting (Momentum, GateFloor, Alpha, Beta,
// the loss weights, ECWarmupEpochs, the recovery strength) take their
// defaults only when all of them are zero: a Config that sets none of them
// wants the paper's; one that sets any (DefaultConfig() with
// ECWarmupEpochs = 0, say) means its zeros. Input and Augment are left as
// they are: "" is the reference's per-band stretch and a zero Augment is
// off, as in a model file, so a partial Config trains the paper's network;
// pnec's defaults (DefaultInput, DefaultAugment) come with DefaultConfig().
func (o TrainOptions) withDefaults() TrainOptions {
	def := DefaultConfig()
	c := &o.Config
	for _, f := range []struct {
		v   *int
		def int
	}{
		{&c.Hidden, def.Hidden}, {&c.DState, def.DState}, {&c.DConv, def.DConv}, {&c.Expand, def.Expand},
		{&c.HeadDim, def.HeadDim}, {&c.Chunk, def.Chunk}, {&c.Groups, def.Groups}, {&c.DiffWindow, def.DiffWindow},
		{&c.Epochs, def.Epochs},
	} {
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	// A fused decision chooses its recovery window at training when none
	// is given (chooseDecision); the network's takes the paper's.
	if c.Recovery.Window == 0 && c.Decision.Mode != DecisionFused {
		c.Recovery.Window = PaperRecoveryWindow
	}
	if c.TauInit == 0 {
		c.TauInit = def.TauInit
	}
	if c.LearningRate == 0 {
		c.LearningRate = def.LearningRate
	}
	if c.Momentum == 0 && c.GateFloor == 0 && c.Alpha == 0 && c.Beta == 0 && c.LambdaBranch == 0 &&
		c.LambdaProto == 0 && c.LambdaCon == 0 && c.ECWarmupEpochs == 0 && c.Recovery.Eta == 0 {
		c.Momentum, c.GateFloor, c.Alpha, c.Beta = def.Momentum, def.GateFloor, def.Alpha, def.Beta
		c.LambdaBranch, c.LambdaProto, c.LambdaCon = def.LambdaBranch, def.LambdaProto, def.LambdaCon
		c.ECWarmupEpochs, c.Recovery.Eta = def.ECWarmupEpochs, def.Recovery.Eta
	}
	if c.Ablation == "" {
		c.Ablation = AblationFull
	}
	if c.Encoder == "" {
		c.Encoder = def.Encoder
	}
	if o.TrainPerClass == 0 {
		o.TrainPerClass = DefaultTrainPerClass
	}
	if o.SplitSeed == 0 {
		o.SplitSeed = DefaultSplitSeed
	}
	if o.Seed == 0 {
		o.Seed = DefaultSeed
	}
	return o
}

// validateConfig checks the values a user can set.
func validateConfig(c Config) error {
	switch c.Ablation {
	case AblationFull, AblationBase, AblationNoEC, AblationNoRC, AblationNoRecovery:
	default:
		return fmt.Errorf("ablation %q: want full, base, no-ec, no-rc or no-recovery", c.Ablation)
	}
	switch c.Encoder {
	case EncoderPaper, EncoderCell:
	default:
		return fmt.Errorf("encoder %q: want paper or cell", c.Encoder)
	}
	switch c.Input {
	case "", InputStretch, InputShape, InputStretchShape, InputSNV:
	default:
		return fmt.Errorf("input %q: want %s, %s, %s or %s", c.Input, InputStretch, InputShape, InputStretchShape, InputSNV)
	}
	if err := c.Augment.validate(); err != nil {
		return err
	}
	if err := c.Decision.validate(); err != nil {
		return err
	}
	switch {
	case c.Epochs < 1:
		return fmt.Errorf("epochs %d: need at least 1", c.Epochs)
	case !(c.LearningRate > 0):
		return fmt.Errorf("learning rate %g: must be positive", c.LearningRate)
	case c.GateFloor < 0 || c.GateFloor > 1:
		return fmt.Errorf("gate floor %g: must be in [0,1]", c.GateFloor)
	case c.Momentum < 0 || c.Momentum >= 1:
		return fmt.Errorf("momentum %g: must be in [0,1)", c.Momentum)
	case !(c.TauInit > 0):
		return fmt.Errorf("tau %g: must be positive", c.TauInit)
	case c.Recovery.Window < 0 || (c.Recovery.Window == 0 && c.Decision.Mode != DecisionFused) || (c.Recovery.Window > 0 && c.Recovery.Window%2 == 0):
		return fmt.Errorf("recovery window %d: must be odd and positive (0: chosen at training, with the fused decision)", c.Recovery.Window)
	case c.Recovery.Eta < 0 || c.Recovery.Eta > 1:
		return fmt.Errorf("recovery eta %g: must be in [0,1]", c.Recovery.Eta)
	case c.InputLevels != 0 && (c.InputLevels < 2 || c.InputLevels > 1<<16):
		return fmt.Errorf("input levels %d: 0 (off) or 2..65536", c.InputLevels)
	}
	return nil
}

// TrainedAs reports whether a model recorded with trained was trained as
// asked: the same configuration but for what training chooses from the
// training pixels, the fused decision's parameters and, where asked
// leaves it 0, its recovery window (chooseDecision). A kept model is
// reused only for the settings it was trained with.
func TrainedAs(trained, asked Config) bool {
	if asked.Decision.Mode == DecisionFused && trained.Decision.Mode == DecisionFused {
		asked.Decision = trained.Decision
		if asked.Recovery.Window == 0 {
			asked.Recovery.Window = trained.Recovery.Window
		}
	}
	return trained == asked
}
