"""Backend defaults written once against ``self.xp``, one mixin per capability area."""
