package admin

func (a *Admin) queueRoutes() []Route { return nil }
