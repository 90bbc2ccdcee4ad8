package admin

func (a *Admin) statusRoutes() []Route { return nil }
